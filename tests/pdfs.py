"""Small PDF files for the tests, written byte by byte: text pages, an outline, and hostile ones."""

from __future__ import annotations

import zlib


def pdf(pages: list[list[str]], *, outline: list[tuple[int, str, int]] = (), title: str | None = None,
        page_tree_loop: bool = False, bomb: int = 0) -> bytes:
    """A PDF of ``pages`` (each a list of lines, in Helvetica), with an ``outline`` of (level,
    title, page index) entries in order, a ``/Title``; ``page_tree_loop``: the page tree holds
    itself as a kid; ``bomb``: the first page's content is that many bytes deflated."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")
    tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for index, lines in enumerate(pages):
        if bomb and index == 0:
            data = zlib.compress(b"\n" * bomb, 9)
            content = add(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream")
        else:
            text = b"BT /F1 12 Tf 72 720 Td 14 TL " + b" ".join(
                b"(" + line.encode("latin-1").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
                + b") Tj T*" for line in lines) + b" ET"
            content = add(b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream")
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                        b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (tree, content, font)))
    kid_refs = [b"%d 0 R" % kid for kid in kids] + ([b"%d 0 R" % tree] if page_tree_loop else [])
    objects[tree - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kid_refs), len(kids))
    extra = b""
    if outline:
        root = add(b"")
        items = [add(b"") for _ in outline]
        # Parent of each entry: the last entry one level up, else the outline's root.
        parents: list[int] = []
        children: dict[int, list[int]] = {root: []}
        for item, (level, _, _) in zip(items, outline, strict=True):
            parent = parents[level - 2] if level > 1 else root
            del parents[level - 1:]
            parents.append(item)
            children.setdefault(parent, []).append(item)
            children.setdefault(item, [])
        parent_of = {child: parent for parent, kids_ in children.items() for child in kids_}
        for item, (_, name, page) in zip(items, outline, strict=True):
            siblings = children[parent_of[item]]
            at = siblings.index(item)
            links = b""
            if at > 0:
                links += b" /Prev %d 0 R" % siblings[at - 1]
            if at + 1 < len(siblings):
                links += b" /Next %d 0 R" % siblings[at + 1]
            if children[item]:
                links += b" /First %d 0 R /Last %d 0 R /Count %d" % (children[item][0], children[item][-1], len(children[item]))
            objects[item - 1] = (b"<< /Title (%s) /Parent %d 0 R /Dest [%d 0 R /Fit]%s >>"
                                 % (name.encode("latin-1"), parent_of[item], kids[page], links))
        top = children[root]
        objects[root - 1] = b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" % (top[0], top[-1], len(top))
        extra = b" /Outlines %d 0 R" % root
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R%s >>" % (tree, extra)
    info = add(b"<< /Title (%s) >>" % title.encode("latin-1")) if title else None
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, catalog, b" /Info %d 0 R" % info if info else b"", xref)
    return bytes(out)
