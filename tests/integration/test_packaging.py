"""The package as it would be published: ``python -m build`` and ``twine check``.

One build per run (sdist, then the wheel from the sdist, as PyPI users get
it). scripts/check-wheel.sh installs that wheel into a fresh virtualenv and
runs the CLI from it; here its contents and metadata are pinned.
"""

from __future__ import annotations

import email
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import adk_pairing

# Building and checking the distribution involves no google-adk code: newest release only.
pytestmark = pytest.mark.version_independent

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "adk_pairing"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(wheel, sdist, build output) built from this checkout."""
    out = tmp_path_factory.mktemp("dist")
    # PYTHONDONTWRITEBYTECODE makes setuptools warn that it skips byte-compiling,
    # a warning about the shell, not the package.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    (wheel,) = out.glob("adk_pairing-*.whl")
    (sdist,) = out.glob("adk_pairing-*.tar.gz")
    return wheel, sdist, log


def test_build_prints_no_warning(dist) -> None:
    _, _, log = dist
    # A file's name is not a warning (the package has a `view_warnings.py`): paths
    # are blanked before the match, so only the build's own words count.
    warnings = [
        line for line in log.splitlines() if "warn" in re.sub(r"\S*/\S*", " ", line).lower()
    ]
    assert warnings == [], "\n".join(warnings)


def test_wheel_holds_the_package_and_its_license_only(dist) -> None:
    wheel, _, _ = dist
    names = set(zipfile.ZipFile(wheel).namelist())
    info = f"adk_pairing-{adk_pairing.__version__}.dist-info"
    package_files = {
        path.relative_to(PACKAGE.parent).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and path.suffix in {".py", ".typed"}
    }

    assert "adk_pairing/py.typed" in package_files
    assert names == package_files | {
        f"{info}/{name}"
        for name in (
            "METADATA",
            "WHEEL",
            "RECORD",
            "entry_points.txt",
            "top_level.txt",
            "licenses/LICENSE",
        )
    }
    license_text = zipfile.ZipFile(wheel).read(f"{info}/licenses/LICENSE").decode()
    assert license_text == (REPO / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text


def test_wheel_metadata_names_the_spdx_license_and_the_one_version(dist) -> None:
    wheel, _, _ = dist
    info = f"adk_pairing-{adk_pairing.__version__}.dist-info"
    metadata = email.message_from_bytes(zipfile.ZipFile(wheel).read(f"{info}/METADATA"))

    assert metadata["Name"] == "adk-pairing"
    assert metadata["Version"] == adk_pairing.__version__
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert metadata["License"] is None  # the deprecated free-text field
    assert "Typing :: Typed" in metadata.get_all("Classifier")
    assert not any(c.startswith("License ::") for c in metadata.get_all("Classifier"))
    assert {url.split(",")[0] for url in metadata.get_all("Project-URL")} >= {
        "Homepage",
        "Source",
        "Changelog",
    }
    assert metadata["Description-Content-Type"] == "text/markdown"
    # What the first install brings: nothing a store or a provider needs on its own.
    base = [r for r in metadata.get_all("Requires-Dist") if "extra ==" not in r]
    assert not any(name in r for r in base for name in ("sqlalchemy", "anthropic", "redis"))


def test_sdist_holds_the_sources_readme_and_license(dist) -> None:
    _, sdist, _ = dist
    root = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())

    for name in ("LICENSE", "README.md", "pyproject.toml", "src/adk_pairing/py.typed"):
        assert f"{root}/{name}" in names


def test_twine_accepts_both(dist) -> None:
    wheel, sdist, _ = dist
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout
