"""mkdocs hooks for the documentation site (mkdocs.yml, ``make docs``).

The Markdown files stay written for GitHub, where they are read too; this
module makes the site out of them without a copy:

* the home page is docs/index.md, the quick start, followed by README.md
  (its title left out, its sections one level down, under "Reference");
  CHANGELOG.md and benchmarks/RESULTS.md become the pages ``changelog.md``
  and ``results.md``;
* every relative link is resolved from the file's place in the repository:
  one to a file that is a page becomes a link to that page (``docs/view.md``
  from README is ``view.md``; ``../README.md#install`` from docs/ is
  ``index.md#install``), one to any other file of the repository (a test,
  a module, the Makefile) a link to it on GitHub, so ``--strict`` checks
  every link and anchor that stays inside the site;
* ``llms.txt`` at the site's root lists every page of the nav with its
  first sentence (https://llmstxt.org), written from the built pages so it
  cannot drift from them;
* ``cli-reference.md`` is the ``--help`` of ``adk-pairing`` and each of its
  commands, rendered from the installed command, so it cannot go stale;
* a name in ``adk_pairing.__all__`` without its page under docs/api/ is a
  warning, which ``--strict`` turns into a failed build.
"""

from __future__ import annotations

import ast
import html as htmllib
import logging
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.adk_pairing")

REPO = Path(__file__).resolve().parents[1]
BRANCH = "main"

#: Repository files outside docs/ that are pages of the site, and their page.
PAGES_OUTSIDE_DOCS = {
    "CHANGELOG.md": "changelog.md",
    "benchmarks/RESULTS.md": "results.md",
}
#: README.md is the second part of the home page (docs/index.md, the quick start).
README, HOME = "README.md", "index.md"
CLI_REFERENCE = "cli-reference.md"

#: ``[text](target)`` and ``![alt](target)``; the target has no spaces.
_LINK = re.compile(r"(?P<open>\]\()(?P<target>[^)\s]+)(?P<close>\))")
_FENCE = re.compile(r"^ *```.*?^ *```", re.DOTALL | re.MULTILINE)


def _repo_path(page_src: str) -> str:
    """The repository path of the file a page was made from."""
    for repo_path, page in PAGES_OUTSIDE_DOCS.items():
        if page == page_src:
            return repo_path
    return f"docs/{page_src}"


def _page_of(repo_path: str) -> str | None:
    """The site page a repository file is, if any."""
    if repo_path == README:
        return HOME
    if repo_path in PAGES_OUTSIDE_DOCS:
        return PAGES_OUTSIDE_DOCS[repo_path]
    if repo_path.startswith("docs/"):
        return repo_path.removeprefix("docs/")
    return None


def _rewritten(target: str, page_src: str, repo_url: str, source: str | None = None) -> str:
    """`target`, a link in the repository file `source` (the page's own by default)."""
    if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
        return target  # a URL, an anchor on this page, or an absolute path
    path, _, anchor = target.partition("#")
    here = posixpath.dirname(source or _repo_path(page_src))
    repo_path = posixpath.normpath(posixpath.join(here, path))
    if repo_path.startswith(".."):
        return target  # outside the repository: mkdocs reports it
    page = _page_of(repo_path)
    if page is None:
        kind = "tree" if (REPO / repo_path).is_dir() else "blob"
        return f"{repo_url.rstrip('/')}/{kind}/{BRANCH}/{repo_path}" + (
            f"#{anchor}" if anchor else ""
        )
    relative = posixpath.relpath(page, posixpath.dirname(page_src) or ".")
    return relative + (f"#{anchor}" if anchor else "")


def _links_resolved(markdown: str, page_src: str, repo_url: str, source: str | None = None) -> str:
    """Every link outside code blocks resolved from `source`'s place in the repository."""

    def rewrite(text: str) -> str:
        return _LINK.sub(
            lambda m: m["open"] + _rewritten(m["target"], page_src, repo_url, source) + m["close"],
            text,
        )

    return _outside_code(markdown, rewrite)


def _outside_code(markdown: str, change: Any) -> str:
    """`markdown` with `change` applied to the text between fenced code blocks."""
    pieces, last = [], 0
    for fence in _FENCE.finditer(markdown):
        pieces += [change(markdown[last : fence.start()]), fence[0]]
        last = fence.end()
    pieces.append(change(markdown[last:]))
    return "".join(pieces)


def _readme_as_reference() -> str:
    """README.md without its title, each heading one level down: the home page's reference."""
    text = (REPO / README).read_text()
    text = re.sub(r"\A# [^\n]*\n", "", text)
    return _outside_code(text, lambda part: re.sub(r"^(#{2,5}) ", r"#\1 ", part, flags=re.M))


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Links resolved from the file's place in the repository (code blocks untouched)."""
    repo_url = config["repo_url"]
    src = page.file.src_uri
    markdown = _links_resolved(markdown, src, repo_url)
    if src == HOME:
        markdown += "\n" + _links_resolved(_readme_as_reference(), src, repo_url, README)
    return markdown


def _cli_reference() -> str:
    """``adk-pairing --help`` and every command's, as the installed command prints them."""
    import click
    import typer.main

    from adk_pairing.cli import app

    command = typer.main.get_command(app)
    root = click.Context(command, info_name="adk-pairing", terminal_width=100)
    sections = [
        "# CLI reference\n",
        "The `--help` of `adk-pairing` and of each command, as the installed command prints "
        "them (rendered when the site is built). What each command does, its output and exit "
        "codes: [The adk-pairing command](cli.md).\n",
        f"## adk-pairing\n\n```\n{command.get_help(root)}\n```\n",
    ]
    for name in command.list_commands(root):
        sub = command.get_command(root, name)
        context = click.Context(sub, info_name=name, parent=root, terminal_width=100)
        sections.append(f"## adk-pairing {name}\n\n```\n{sub.get_help(context)}\n```\n")
    return "\n".join(sections)


def _public_names() -> list[str]:
    """``adk_pairing.__all__``, read from the source without importing it."""
    tree = ast.parse((REPO / "src" / "adk_pairing" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise RuntimeError("adk_pairing/__init__.py defines no __all__")


def on_files(files: Files, config: Any) -> Files:
    """The pages made from files outside docs/, and the check that the API is covered."""
    for repo_path, page in PAGES_OUTSIDE_DOCS.items():
        files.append(File.generated(config, page, abs_src_path=str(REPO / repo_path)))
    files.append(File.generated(config, CLI_REFERENCE, content=_cli_reference()))
    api_pages = {file.src_uri for file in files if file.src_uri.startswith("api/")}
    for name in _public_names():
        if f"api/{name}.md" not in api_pages:
            log.warning("adk_pairing.%s has no API page: add docs/api/%s.md", name, name)
    return files


#: The first sentence of every page, from its built HTML (`on_page_content`), for llms.txt.
_FIRST_SENTENCES: dict[str, str] = {}
_PARAGRAPH = re.compile(r"<p\b[^>]*>(.*?)</p>", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"])")
_LONGEST_DESCRIPTION = 200


def _first_sentence(html: str) -> str | None:
    """The first sentence of the first paragraph of prose (code kept in backticks)."""
    for paragraph in _PARAGRAPH.finditer(html):
        text = re.sub(r"<code\b[^>]*>(.*?)</code>", r"`\1`", paragraph[1], flags=re.DOTALL)
        text = htmllib.unescape(re.sub(r"<[^>]+>", "", text))
        text = re.sub(r"\s+", " ", text).strip()
        if not text or text.startswith("Bases:"):
            continue
        sentence = _SENTENCE_END.split(text, maxsplit=1)[0]
        if len(sentence) > _LONGEST_DESCRIPTION:
            sentence = sentence[: _LONGEST_DESCRIPTION - 1].rsplit(" ", 1)[0] + "…"
        return sentence
    return None


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    """Remembers the page's first sentence for llms.txt."""
    sentence = _first_sentence(html)
    if sentence is None:
        log.warning("%s opens with no sentence to describe it in llms.txt", page.file.src_uri)
    else:
        _FIRST_SENTENCES[page.file.src_uri] = sentence
    return html


def _llms_txt(nav: Any, config: Any) -> str:
    """https://llmstxt.org: the site's pages, section by section, each with its first sentence."""

    def entry(page: Any) -> str:
        url = page.canonical_url if config["site_url"] else (page.url or "./")
        description = _FIRST_SENTENCES.get(page.file.src_uri, "")
        return f"- [{page.title}]({url}): {description}".rstrip(": ")

    sections: list[tuple[str, list[str]]] = []

    def walk(items: list[Any], path: tuple[str, ...]) -> None:
        for item in items:
            if item.is_section:
                walk(item.children, (*path, item.title))
            elif item.is_page:
                title = ": ".join(path) if path else ("Optional" if sections else "Start here")
                if not sections or sections[-1][0] != title:
                    sections.append((title, []))
                sections[-1][1].append(entry(item))

    walk(nav.items, ())
    lines = [
        f"# {config['site_name']}",
        "",
        f"> {config['site_description']}",
        "",
        "The documentation site's pages, each with its first sentence. The home page opens "
        "with a five-minute quick start; the API reference has a page per public name.",
    ]
    for title, entries in sections:
        lines += ["", f"## {title}", "", *entries]
    return "\n".join(lines) + "\n"


_NAV: list[Any] = []


def on_nav(nav: Any, config: Any, files: Files) -> Any:
    """Keeps the nav for llms.txt."""
    _NAV[:] = [nav]
    return nav


def on_post_build(config: Any) -> None:
    """Writes llms.txt at the site's root."""
    (Path(config["site_dir"]) / "llms.txt").write_text(_llms_txt(_NAV[0], config))
