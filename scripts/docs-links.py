#!/usr/bin/env python3
"""Checks every relative link of the built guide, and of README.md and CHANGELOG.md.

Usage: scripts/docs-links.py BOOK_HTML_DIR [--src docs/src] [--repo .] [--max-readme-lines 300]

- In the built HTML (every page but mdBook's own `print.html`, `toc.html` and `404.html`, and
  but the rustdoc pages under `api/`, whose files links into them must name):
  every `<a href>` and `<img src>` that is not absolute (no scheme, no leading `/`). A link
  inside the book must name a file of the book, and its `#anchor` an `id` of that page. A link
  that leaves the book is a link to a repository file: it is resolved from the chapter's
  source file (`docs/src/...md`) and must name a file or folder of the repository (mdBook
  rewrites `.md` to `.html`, so `X.html` there means `X.md`).
- In README.md and CHANGELOG.md: every relative Markdown link (outside code) must name a file
  or folder of the repository; one into `docs/src/*.md` with an `#anchor` must name an `id` of
  the built page.
- README.md has at most --max-readme-lines lines.

Prints how many links it checked; exits 1 with the list of broken ones. Python 3, stdlib only.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

SKIP_PAGES = {"print.html", "toc.html", "404.html"}
# The API docs (`cargo doc`) that scripts/docs copies into the book: pages may link into them.
API = "api"
MD_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


class Page(HTMLParser):
    """The ids of one HTML page and its links (`a href`, `img src`)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        if tag == "a" and a.get("href") is not None:
            self.links.append(a["href"])
        if tag == "img" and a.get("src") is not None:
            self.links.append(a["src"])


def relative(target: str) -> bool:
    """A link this checker resolves: no scheme, not absolute, not empty."""
    parts = urlsplit(target)
    return not parts.scheme and not parts.netloc and not target.startswith("/") and target != ""


class Checker:
    def __init__(self, book: str, src: str, repo: str) -> None:
        self.book = os.path.realpath(book)
        self.src = os.path.realpath(src)
        self.repo = os.path.realpath(repo)
        self.pages: dict[str, Page] = {}
        self.checked = 0
        self.broken: list[str] = []

    def page(self, path: str) -> Page:
        path = os.path.realpath(path)
        if path not in self.pages:
            p = Page()
            with open(path, encoding="utf-8") as f:
                p.feed(f.read())
            self.pages[path] = p
        return self.pages[path]

    def inside(self, path: str, root: str) -> bool:
        return path == root or path.startswith(root + os.sep)

    def repo_file(self, path: str) -> str | None:
        """The repository file or folder at `path`, or its `.md` for mdBook's `.html`."""
        if os.path.exists(path):
            return path
        if path.endswith(".html") and os.path.exists(path[:-5] + ".md"):
            return path[:-5] + ".md"
        return None

    def anchor(self, where: str, target: str, html: str, fragment: str) -> None:
        if fragment and unquote(fragment) not in self.page(html).ids:
            self.broken.append(f"{where}: {target}: no anchor #{fragment} in "
                               f"{os.path.relpath(html, self.book)}")

    def check_book(self) -> None:
        for folder, subfolders, files in os.walk(self.book):
            if folder == self.book and API in subfolders:
                subfolders.remove(API)  # rustdoc's pages: links into them are checked, not theirs
            for name in sorted(files):
                if not name.endswith(".html"):
                    continue
                html = os.path.join(folder, name)
                rel = os.path.relpath(html, self.book)
                if rel in SKIP_PAGES:
                    continue
                for target in self.page(html).links:
                    if not relative(target) and not target.startswith("#"):
                        continue
                    self.checked += 1
                    self.check_book_link(rel, html, target)

    def check_book_link(self, rel: str, html: str, target: str) -> None:
        parts = urlsplit(target)
        path, fragment = unquote(parts.path), parts.fragment
        if not path:
            self.anchor(rel, target, html, fragment)
            return
        resolved = os.path.normpath(os.path.join(os.path.dirname(html), path))
        if self.inside(resolved, self.book):
            if os.path.isdir(resolved):
                resolved = os.path.join(resolved, "index.html")
            if not os.path.isfile(resolved):
                self.broken.append(f"{rel}: {target}: no such page or file in the book")
            elif resolved.endswith(".html"):
                self.anchor(rel, target, resolved, fragment)
            return
        # Out of the book: a repository file, relative to the chapter's source.
        source_dir = os.path.join(self.src, os.path.dirname(rel))
        in_repo = os.path.normpath(os.path.join(source_dir, path))
        if not self.inside(in_repo, self.repo):
            self.broken.append(f"{rel}: {target}: leaves the repository")
        elif self.repo_file(in_repo) is None:
            self.broken.append(f"{rel}: {target}: no file {os.path.relpath(in_repo, self.repo)} "
                               "in the repository")

    def check_markdown(self, md: str) -> None:
        where = os.path.relpath(md, self.repo)
        with open(md, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.S | re.M)  # code blocks
        text = re.sub(r"`[^`\n]*`", "", text)  # code spans
        for m in MD_LINK.finditer(text):
            target = m.group(1)
            if not relative(target) and not target.startswith("#"):
                continue
            self.checked += 1
            parts = urlsplit(target)
            path, fragment = unquote(parts.path), parts.fragment
            if not path:
                continue  # an anchor of the Markdown file itself, as GitHub renders it
            resolved = os.path.normpath(os.path.join(os.path.dirname(md), path))
            if not self.inside(resolved, self.repo) or not os.path.exists(resolved):
                self.broken.append(f"{where}: {target}: no such file in the repository")
                continue
            summary = os.path.join(self.src, "SUMMARY.md")
            if self.inside(resolved, self.src) and resolved.endswith(".md") and resolved != summary:
                html = os.path.join(self.book, os.path.relpath(resolved, self.src))[:-3] + ".html"
                if not os.path.isfile(html):
                    self.broken.append(f"{where}: {target}: not a chapter of the book "
                                       "(not in docs/src/SUMMARY.md)")
                else:
                    self.anchor(where, target, html, fragment)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("book", help="the built HTML (mdbook build's output folder)")
    ap.add_argument("--src", default="docs/src")
    ap.add_argument("--repo", default=".")
    ap.add_argument("--max-readme-lines", type=int, default=300)
    a = ap.parse_args()

    c = Checker(a.book, a.src, a.repo)
    if not os.path.isfile(os.path.join(c.book, "index.html")):
        print(f"docs-links: {a.book} holds no built book (index.html)", file=sys.stderr)
        return 1
    c.check_book()
    for name in ("README.md", "CHANGELOG.md"):
        path = os.path.join(c.repo, name)
        if os.path.isfile(path):
            c.check_markdown(path)

    problems = list(c.broken)
    with open(os.path.join(c.repo, "README.md"), encoding="utf-8") as f:
        lines = sum(1 for _ in f)
    if lines > a.max_readme_lines:
        problems.append(f"README.md: {lines} lines, more than {a.max_readme_lines}")
    pages = sum(1 for p in c.pages if os.path.basename(p) not in SKIP_PAGES)
    print(f"docs-links: {c.checked} links checked in {pages} pages, README.md and CHANGELOG.md; "
          f"README.md has {lines} lines")
    if problems:
        print(f"docs-links: {len(problems)} problem(s):", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
