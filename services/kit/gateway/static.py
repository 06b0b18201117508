"""The web client's static files, read once when the gateway config is rendered.

The gateway serves the repository's `web/` directory (the browser client, plain ES
modules with no build step) as Envoy direct responses: no file server, no extra
process, and the files a gateway serves are exactly those of the image (or checkout)
that rendered its config. `load_web` walks the directory; `config.render` turns each
`StaticFile` into a GET route that needs no token.

Why these headers:
- `cache-control: no-cache`: the modules are not fingerprinted (no build step, so
  `api.js` keeps its name across releases); a browser must revalidate each time or it
  could run one release's `board.js` with another's `api.js`. Envoy's direct responses
  cannot answer 304, so revalidating means downloading again: the client is small.
- `content-security-policy`: scripts, styles, fonts, images and connections from this
  origin only. The client makes no external requests, and the browser enforces it.
- `x-content-type-options: nosniff`: modules load only with their declared type.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# By extension; a file of any other kind is refused when the config is rendered, so
# nothing reaches a browser with a guessed type.
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
    ".webmanifest": "application/manifest+json",
}
TEXT_SUFFIXES = {".html", ".js", ".mjs", ".css", ".json", ".svg", ".txt", ".webmanifest"}
INDEX = "index.html"
CACHE_CONTROL = "no-cache"
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


class StaticError(ValueError):
    """The web directory holds something the gateway cannot serve; the message says what."""


@dataclass(frozen=True)
class StaticFile:
    """One file as served: its URL path (`/js/api.js`), type and bytes."""

    path: str
    content_type: str
    body: bytes

    @property
    def is_text(self) -> bool:
        return self.content_type.startswith("text/") or self.content_type in {
            "application/json", "image/svg+xml", "application/manifest+json"}



def load_web(root: Path) -> list[StaticFile]:
    """Every file under `root`, by URL path, plus `/` for `index.html`; hidden files
    (`.something`) are skipped. A missing directory or an unknown file type is a
    StaticError naming it."""
    if not root.is_dir():
        raise StaticError(f"web directory {root} does not exist")
    files: list[StaticFile] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts):
            continue
        suffix = path.suffix.lower()
        if suffix not in CONTENT_TYPES:
            raise StaticError(f"{path}: no content type for {suffix or 'files without a suffix'}"
                              f" (known: {', '.join(sorted(CONTENT_TYPES))})")
        url = "/" + relative.as_posix()
        files.append(StaticFile(url, CONTENT_TYPES[suffix], path.read_bytes()))
    index = next((f for f in files if f.path == "/" + INDEX), None)
    if index is not None:
        files.insert(0, StaticFile("/", index.content_type, index.body))
    return files


def top_level_names(files: Iterable[StaticFile]) -> set[str]:
    """The first path segments the files occupy (`js`, `index.html`, ...)."""
    return {f.path.split("/")[1] for f in files if f.path != "/"}


def check_no_collision(files: Sequence[StaticFile], reserved: Iterable[str]) -> None:
    """Refuse web files whose first path segment is one the API uses (`v1`, `healthz`):
    their token rules would open API paths."""
    clash = top_level_names(files) & set(reserved)
    if clash:
        raise StaticError(f"web files may not live under {sorted(clash)}: the API uses them")
