"""A venv's package folders, read from its layout on every platform, and the paths a Python server is given."""

from __future__ import annotations

import os
from pathlib import Path

from mcp_codetools.lsp.servers import ServerSpec
from mcp_codetools.lsp.venvs import extra_paths, site_packages


def _venv(folder: Path, *parts: str, config: str | None = "version = 3.12.1\n") -> Path:
    (folder.joinpath(*parts)).mkdir(parents=True)
    if config is not None:
        (folder / "pyvenv.cfg").write_text(config, encoding="utf-8")
    return folder.joinpath(*parts)


def test_the_posix_layout_prefers_the_version_pyvenv_cfg_names(tmp_path: Path) -> None:
    other = _venv(tmp_path / "env", "lib", "python3.10", "site-packages")  # sorts first by name
    named = _venv(tmp_path / "env", "lib", "python3.9", "site-packages", config="version_info = 3.9.18.final.0\n")
    assert site_packages(tmp_path / "env") == [named, other]


def test_the_windows_layout_is_found(tmp_path: Path) -> None:
    folder = _venv(tmp_path / "env", "Lib", "site-packages")
    assert site_packages(tmp_path / "env") == [folder]


def test_a_folder_without_pyvenv_cfg_is_not_a_venv(tmp_path: Path) -> None:
    _venv(tmp_path / "env", "lib", "python3.12", "site-packages", config=None)
    assert site_packages(tmp_path / "env") == []


def test_extra_paths_join_pythonpath_the_roots_venvs_and_an_active_one(tmp_path: Path) -> None:
    root = tmp_path / "root"
    project = _venv(root / ".venv", "lib", "python3.12", "site-packages")
    active = _venv(tmp_path / "active", "lib", "python3.12", "site-packages")
    conda = tmp_path / "conda" / "lib" / "python3.12" / "site-packages"  # conda has no pyvenv.cfg
    conda.mkdir(parents=True)
    src = tmp_path / "src"
    src.mkdir()
    environ = {
        "PYTHONPATH": os.pathsep.join([str(src), "relative/dir", str(tmp_path / "missing")]),
        "VIRTUAL_ENV": str(tmp_path / "active"),
        "CONDA_PREFIX": str(tmp_path / "conda"),
    }
    assert extra_paths(root, environ) == [str(src), str(project), str(active), str(conda)]


def test_a_python_server_never_sees_an_active_environment_or_pythonpath() -> None:
    base = {"PATH": "/bin", "VIRTUAL_ENV": "/v", "CONDA_PREFIX": "/c", "PYTHONPATH": "/p"}
    python = ServerSpec("python", ("x",), frozenset({".py"})).environment(dict(base))
    other = ServerSpec("rust", ("x",), frozenset({".rs"})).environment(dict(base))
    assert python == {"PATH": "/bin", "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1"}
    assert other == base
