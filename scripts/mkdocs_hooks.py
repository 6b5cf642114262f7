"""mkdocs hooks for the documentation site (mkdocs.yml, ``make docs``).

The Markdown files stay written for GitHub, where they are read too; this
module makes the site out of them without a copy:

* README.md, CHANGELOG.md and benchmarks/RESULTS.md become the pages
  ``index.md``, ``changelog.md`` and ``results.md``;
* every relative link is resolved from the file's place in the repository:
  one to a file that is a page becomes a link to that page (``docs/view.md``
  from README is ``view.md``; ``../README.md#install`` from docs/ is
  ``index.md#install``), one to any other file of the repository (a test,
  a module, the Makefile) a link to it on GitHub, so ``--strict`` checks
  every link and anchor that stays inside the site;
* ``cli-reference.md`` is the ``--help`` of ``adk-pairing`` and each of its
  commands, rendered from the installed command, so it cannot go stale;
* a name in ``adk_pairing.__all__`` without its page under docs/api/ is a
  warning, which ``--strict`` turns into a failed build.
"""

from __future__ import annotations

import ast
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
    "README.md": "index.md",
    "CHANGELOG.md": "changelog.md",
    "benchmarks/RESULTS.md": "results.md",
}
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
    if repo_path in PAGES_OUTSIDE_DOCS:
        return PAGES_OUTSIDE_DOCS[repo_path]
    if repo_path.startswith("docs/"):
        return repo_path.removeprefix("docs/")
    return None


def _rewritten(target: str, page_src: str, repo_url: str) -> str:
    if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
        return target  # a URL, an anchor on this page, or an absolute path
    path, _, anchor = target.partition("#")
    here = posixpath.dirname(_repo_path(page_src))
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


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Links resolved from the file's place in the repository (code blocks untouched)."""
    repo_url = config["repo_url"]

    def rewrite(text: str) -> str:
        return _LINK.sub(
            lambda m: m["open"] + _rewritten(m["target"], page.file.src_uri, repo_url) + m["close"],
            text,
        )

    pieces, last = [], 0
    for fence in _FENCE.finditer(markdown):
        pieces += [rewrite(markdown[last : fence.start()]), fence[0]]
        last = fence.end()
    pieces.append(rewrite(markdown[last:]))
    return "".join(pieces)


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
