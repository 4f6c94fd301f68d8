"""Install packages into the running Python's environment with uv, configured as pip is here.

Usage: ``python .ci/uv_install.py UV_REQUIREMENT PIP_INSTALL_ARGS...`` (``make venv`` runs it
with the interpreter of ``.venv``).

uv installs the same packages as pip (the same resolver inputs: indexes, find-links,
constraints) several times faster: on the 2-core machine of the project, the book and test
environment took about 10 s with uv (downloads included) against 88 s with pip.  But uv
reads neither pip's configuration files nor ``PIP_*`` variables, so this script asks pip for
its configuration (``pip config list``, which shows the files and the environment alike) and
passes the settings that change what gets installed to ``uv pip install`` as options:

- ``index-url``, ``extra-index-url``, ``find-links``, ``constraint``, ``no-index`` (same
  meaning) and ``trusted-host`` (``--allow-insecure-host``), with
  ``--index-strategy unsafe-best-match``: like pip, take the best version from all indexes
  (uv's default takes the first index that has the package);
- ``cert`` as ``SSL_CERT_FILE`` and ``timeout`` (``PIP_DEFAULT_TIMEOUT``) as ``UV_HTTP_TIMEOUT``.

A setting given in the environment (``PIP_FIND_LINKS``...) wins over the files, and the
``install`` section over ``global``, as for pip.  If uv cannot be installed or fails, the
same arguments go to ``pip install`` instead, with a note on standard error: pip is the
reference installer and uv only a faster way to the same environment.  Exit status: that of
the installer that ran last.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

#: pip option -> uv option, for the options that take one or more values.
LIST_OPTIONS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url",
                "find-links": "--find-links", "constraint": "--constraints",
                "trusted-host": "--allow-insecure-host"}
#: pip switch -> uv switch.
FLAG_OPTIONS = {"no-index": "--no-index"}
#: how pip's configuration writes a switch that is on.
TRUE = ("1", "true", "yes", "on")
#: pip option -> environment variable of uv.
ENV_OPTIONS = {"cert": "SSL_CERT_FILE", "timeout": "UV_HTTP_TIMEOUT",
               "default-timeout": "UV_HTTP_TIMEOUT"}   # PIP_DEFAULT_TIMEOUT
#: sections of pip's configuration, lowest precedence first (":env:" is PIP_* variables).
SECTIONS = ("global", "install", ":env:")


def pip_settings(listing: str) -> dict[str, str]:
    """Effective pip settings from the output of ``pip config list`` (``section.key='value'``
    lines): for each key, the value of the section with the highest precedence."""
    found: dict[str, dict[str, str]] = {}
    for line in listing.splitlines():
        name, sep, value = line.partition("=")
        section, dot, key = name.rpartition(".")
        if not (sep and dot) or section not in SECTIONS:
            continue
        words = shlex.split(value)
        found.setdefault(key, {})[section] = words[0] if words else ""
    return {key: by[max(by, key=SECTIONS.index)] for key, by in found.items()}


def uv_options(settings: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """``uv pip install`` options and environment variables for pip's ``settings``."""
    args = ["--index-strategy", "unsafe-best-match"]
    for key, option in LIST_OPTIONS.items():
        for value in settings.get(key, "").split():
            args += [option, value]
    args += [flag for key, flag in FLAG_OPTIONS.items() if settings.get(key, "").lower() in TRUE]
    env = {var: settings[key] for key, var in ENV_OPTIONS.items() if settings.get(key)}
    return args, env


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    uv_requirement, pip_args = argv[0], argv[1:]
    pip = [sys.executable, "-m", "pip"]
    uv = Path(sys.executable).parent / "uv"
    got_uv = subprocess.run(pip + ["install", "--progress-bar", "off", "-q", uv_requirement]).returncode == 0
    if got_uv and uv.is_file():
        listing = subprocess.run(pip + ["config", "list"], capture_output=True, text=True).stdout
        args, env = uv_options(pip_settings(listing))
        cmd = [str(uv), "pip", "install", "--python", sys.executable, *args, *pip_args]
        print("==> uv pip install", " ".join(shlex.quote(a) for a in args + pip_args), flush=True)
        if subprocess.run(cmd, env={**os.environ, **env}).returncode == 0:
            return 0
        print("NOTE: uv failed (above); installing with pip instead", file=sys.stderr, flush=True)
    else:
        print(f"NOTE: could not install {uv_requirement}; installing with pip instead", file=sys.stderr, flush=True)
    return subprocess.run(pip + ["install", "--progress-bar", "off", *pip_args]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
