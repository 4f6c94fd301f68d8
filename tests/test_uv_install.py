"""``.ci/uv_install.py``: uv gets pip's configuration (what ``make venv`` installs with)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "uv_install.py"
spec = importlib.util.spec_from_file_location("uv_install", SCRIPT)
uv_install = importlib.util.module_from_spec(spec)
spec.loader.exec_module(uv_install)

# `pip config list` on the project's machine: environment (PIP_*) and a configuration file
LISTING = """\
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.default-timeout='180'
:env:.disable-pip-version-check='1'
:env:.find-links='/opt/wheels'
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/other-wheels'
"""


def test_the_machines_configuration_becomes_uv_options():
    args, env = uv_install.uv_options(uv_install.pip_settings(LISTING))
    assert args == ["--index-strategy", "unsafe-best-match",
                    "--extra-index-url", "file:///opt/pypi/simple",
                    "--extra-index-url", "file:///opt/pypi-more/simple",
                    "--find-links", "/opt/wheels",          # PIP_FIND_LINKS wins over the file
                    "--constraints", "/etc/xdg/pip/constraints.txt"]
    assert env == {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "UV_HTTP_TIMEOUT": "180"}


def test_precedence_environment_then_install_then_global():
    listing = ("global.index-url='https://a/simple'\n"
               "install.index-url='https://b/simple'\n"
               "global.timeout='5'\n")
    assert uv_install.pip_settings(listing) == {"index-url": "https://b/simple", "timeout": "5"}
    listing += ":env:.index-url='https://c/simple'\n"
    assert uv_install.pip_settings(listing)["index-url"] == "https://c/simple"


def test_no_configuration_is_uvs_defaults_with_pips_index_strategy():
    assert uv_install.uv_options(uv_install.pip_settings("")) == (
        ["--index-strategy", "unsafe-best-match"], {})


def test_settings_of_other_sections_and_odd_lines_are_ignored():
    listing = "freeze.find-links='/x'\nnot a setting\nglobal.no-cache-dir='1'\n"
    assert uv_install.uv_options(uv_install.pip_settings(listing)) == (
        ["--index-strategy", "unsafe-best-match"], {})


def test_offline_switch_and_trusted_hosts():
    listing = ":env:.no-index='1'\nglobal.no-index='false'\nglobal.trusted-host='a.local b.local'\n"
    args, _ = uv_install.uv_options(uv_install.pip_settings(listing))
    assert args == ["--index-strategy", "unsafe-best-match", "--allow-insecure-host", "a.local",
                    "--allow-insecure-host", "b.local", "--no-index"]
    args, _ = uv_install.uv_options(uv_install.pip_settings("global.no-index='false'\n"))
    assert "--no-index" not in args
