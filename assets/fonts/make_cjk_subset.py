"""Writes ``auk-cjk-subset.woff2`` (for the page), the font of the app's own Chinese wording (run again after adding Chinese to the code; the files are
committed): ``python assets/fonts/make_cjk_subset.py``, with Debian's fonts-wqy-microhei installed
(and the brotli module, which WOFF2 compresses with).

The glyphs are every CJK character and CJK punctuation mark in ``auk_app``'s source (the
cookbook's Chinese templates, the builder's labels), cut from WenQuanYi Micro Hei (Apache-2.0,
see LICENSE-wqy-microhei and NOTICE beside this file) and renamed "AuK CJK Subset" since it holds
only those. A browser without a CJK font of its own draws this wording with it instead of empty
boxes; Chinese typed by a person is drawn by their own fonts. (The figures draw any Chinese with
the packaged Noto Sans CJK SC: auk_app/ui/figures.py.)
"""

from __future__ import annotations

import re
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTFont

HERE = Path(__file__).parent
SOURCE = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
FAMILY = "AuK CJK Subset"
WEB = HERE / "auk-cjk-subset.woff2"
CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def app_characters(root: Path = HERE.parents[1] / "auk_app") -> str:
    """Every CJK character in the package's source, sorted."""
    found = set()
    for path in root.rglob("*.py"):
        found |= set(CJK.findall(path.read_text(encoding="utf-8")))
    return "".join(sorted(found))


def main() -> None:
    font = TTFont(SOURCE, fontNumber=0)  # 0: WenQuanYi Micro Hei, 1: its monospaced twin
    options = subset.Options()
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=app_characters())
    subsetter.subset(font)
    names = font["name"]
    for record in list(names.names):
        if record.nameID in (1, 4, 16, 18):  # family, full name, typographic family, Mac full name
            names.setName(FAMILY, record.nameID, record.platformID, record.platEncID, record.langID)
        elif record.nameID == 3:  # unique identifier
            names.setName(f"{FAMILY}: a subset of WenQuanYi Micro Hei 0.2.0-beta", 3, record.platformID,
                          record.platEncID, record.langID)
        elif record.nameID == 6:  # PostScript name
            names.setName(FAMILY.replace(" ", ""), 6, record.platformID, record.platEncID, record.langID)
    font.flavor = "woff2"
    font.save(WEB)
    print(f"{WEB.name}: {len(app_characters())} characters, {WEB.stat().st_size} bytes")


if __name__ == "__main__":
    main()
