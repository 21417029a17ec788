"""render_common.py: the error every kind of source of a render raises, and the text helpers they share."""

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render_common import (
    RenderError,
    _decode,
    _join,
    relative_text,
)


def test_an_error_names_the_file_the_document_the_item_and_the_line():
    assert str(RenderError("bad")) == "bad"
    assert str(RenderError("bad", path="a.yaml", doc=1, item=2, line=3)) == "a.yaml (document 1, item 2, line 3): bad"
    under = RenderError("bad", path="a.yaml", doc=0).under("apps")
    assert (under.path, under.doc, str(under)) == ("apps/a.yaml", 0, "apps/a.yaml (document 0): bad")
    assert RenderError("bad", path="./").under("apps").path == "apps/"
    assert RenderError("bad").under("apps").path is None


def test_an_error_never_names_the_checkout_directory():
    err = RenderError("cannot read /cache/abc/apps/x.yaml", path="x.yaml").relative_to("/cache/abc")
    assert err.problem == "cannot read apps/x.yaml" and err.path == "x.yaml"
    assert relative_text("in /cache/abc and /cache/abc-other/x", "/cache/abc") == "in . and /cache/abc-other/x"
    assert relative_text("/x", "/") == "/x" and _join("", "a") == "a" and _join("p", "a") == "p/a"


def test_text_is_utf8_without_its_byte_order_mark():
    assert _decode("\ufeffkind: x".encode("utf-8"), "a.yaml") == "kind: x"
    with pytest.raises(RenderError, match=r"not UTF-8 text \(byte 0xff at offset 3\)") as info:
        _decode(b"a:\n\xff", "a.yaml")
    assert (info.value.path, info.value.line) == ("a.yaml", 2)
