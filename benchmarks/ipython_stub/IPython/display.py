"""``display``, ``HTML``, ``Markdown`` and ``Image`` of the IPython stand-in (see ``__init__``)."""


class _Obj:
    kind = "object"

    def __init__(self, data=None, *args, **kwargs):
        self.data = data


class HTML(_Obj):
    kind = "HTML"


class Markdown(_Obj):
    kind = "Markdown"


class Image(_Obj):
    kind = "Image"


def display(*objs, **kwargs):
    """Print markdown as text, raw outputs as their text/plain part, HTML and images as a tag."""
    for o in objs:
        if isinstance(o, Markdown):
            print(o.data)
        elif isinstance(o, _Obj):
            print(f"<{o.kind}>")
        elif isinstance(o, dict):
            print(o.get("text/plain", "<raw>"))
        else:
            print(repr(o))
