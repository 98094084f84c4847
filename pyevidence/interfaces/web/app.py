"""The Starlette application of `pyevidence serve`: four read-only pages over one scope.

The scope (a ScopedStore for the tenant, the revision, the clock) is fixed when the app
is made, from the operator's command line. No request can name another: a query
parameter a page does not take is refused (400), and headers and cookies are never
read. A record or version outside the scope gets the same 404 as one that exists
nowhere, and so does a forgotten one: forget erased its revision, so no page can tell
whether it was in the scope (the MCP tools leave it out alike). Every page is also JSON
with ``?format=json``, in the shapes the CLI prints.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ... import tool
from ...core import jsonout, validation
from ...core.errors import EvidenceError, ValidationError
from ...core.records import Version, parse_version
from ...core.tokens import token_set
from ...store import ScopedStore
from ..clock import Clock
from . import text
from .serve import LOOPBACK_NAMES

# No script at all, styles only from our own stylesheet, forms only to ourselves, never framed.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
# The most of each version /diff compares (its fields and text as lines, and their UTF-8 bytes).
# difflib's time grows with the square of the lines when many are alike (two bodies of 200,000
# short lines took minutes) and its output with their bytes; within these a diff takes well under
# a second and is at most about twice the bytes compared.
DIFF_MAX_LINES = 5_000
DIFF_MAX_BYTES = 256 * 1024
NOT_FOUND = (
    "No such record or version in this scope. A forgotten record is not shown either: forget "
    "erases which revision it was in, with its text."
)
PROVES = (
    "Every stored version still hashes to its content hash, each link of this tenant's chain "
    "follows from the one before, and every current record equals its latest version: nothing "
    "was edited, removed or erased without a forget since those hashes were written."
)
DOES_NOT_PROVE = (
    "It is tamper evidence, not proof of authorship: someone who can write the database file "
    "can also recompute every hash. Keep a copy of a recent chain hash (or a backup) elsewhere "
    "to detect a rewrite of the whole chain. It says nothing about whether a record is true."
)


class SecurityHeaders:
    """Adds SECURITY_HEADERS to every response, errors and 404s included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


OTHER_SITE = (
    "Refused: another site's page asked for this one (Sec-Fetch-Site: {site}). pyevidence serve "
    "answers only its own pages and what you open yourself: type or paste the address, or click a "
    "link to it."
)


class SameOriginOnly:
    """Refuses (403) what another site's page asks for, as a browser says in Sec-Fetch-Site: a
    hostile page's fetch, image or frame cannot make the server diff or verify for it, or read
    anything. Its own pages' requests (same-origin), what the user typed or bookmarked (none) and
    clients that send no such header (curl) are answered, and so is a top-level navigation the
    user clicked (Sec-Fetch-User: ?1), so that a citation linked from a ticket or a chat opens.
    same-site is refused as well: another port of the same host is same-site."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            site = headers.get("sec-fetch-site", "none")
            clicked = (
                headers.get("sec-fetch-mode") == "navigate"
                and headers.get("sec-fetch-dest") == "document"
                and headers.get("sec-fetch-user") == "?1"
            )
            if site not in ("same-origin", "none") and not clicked:
                text = OTHER_SITE.format(site=site if site in ("cross-site", "same-site") else "?")
                await PlainTextResponse(text, status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pyevidence.interfaces.web", "templates"),
        autoescape=True,  # every template, whatever its name: all text is escaped unless marked safe
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["visible"] = text.visible
    env.globals["link_target"] = text.link_target
    env.globals["url"] = _url
    return env


def _url(path: str, **params: str) -> str:
    return f"{path}?{urlencode(params)}" if params else path


class Pages:
    """The page handlers, bound to one scope."""

    def __init__(self, scoped: ScopedStore, *, revision: str, clock: Clock) -> None:
        self.scoped = scoped
        self.revision = revision
        self.clock = clock
        self.env = _environment()
        self.css = resources.files(__package__).joinpath("static/style.css").read_bytes()

    # -- helpers -----------------------------------------------------------------------------

    def _params(self, request: Request, allowed: tuple[str, ...]) -> dict[str, str]:
        """The request's query parameters: each at most once, and only those this page takes."""
        query = request.query_params
        unknown = sorted({tool.shown_name(key) for key in query if key not in (*allowed, "format")})
        if unknown:
            takes = ", ".join(allowed) if allowed else "only format"
            raise ValidationError(
                "parameters",
                f"unknown parameter(s) {', '.join(unknown)}; this page takes {takes} "
                "(the tenant and the revision are fixed by whoever started the server)",
            )
        repeated = sorted({key for key in query if len(query.getlist(key)) > 1})
        if repeated:
            raise ValidationError("parameters", f"{', '.join(repeated)} given more than once")
        return {key: query[key] for key in query}

    def _wants_json(self, params: Mapping[str, str]) -> bool:
        chosen = params.get("format", "html")
        if chosen not in ("html", "json"):
            raise ValidationError("format", f"must be html or json; got {chosen!r}")
        return chosen == "json"

    def _required(self, params: Mapping[str, str], name: str, what: str) -> str:
        """A parameter the page cannot answer without: missing or blank is a 400 naming it."""
        if name not in params:
            raise ValidationError(name, f"is required: {what}")
        return validation.text(name, params[name])

    def _version_param(self, params: Mapping[str, str], name: str) -> str:
        """A version identifier, checked by the store's rule but named by this page's parameter."""
        value = self._required(params, name, "a version as a citation gives it, '<seq>-<64 hex digits>'")
        if parse_version(value) is None:
            shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
            raise ValidationError(
                name, f"must be a version as a citation gives it, '<seq>-<64 hex digits>'; got {shown}"
            )
        return value

    def _html(
        self, template: str, status: int = 200, *, now: int | None = None, **context: Any
    ) -> HTMLResponse:
        # A page that judged expiry passes the now it judged at, so the header shows that one.
        shown_now = self.clock.now() if now is None else now
        page = self.env.get_template(template).render(
            scope={"tenant": self.scoped.tenant, "revision": self.revision, "now": shown_now},
            **context,
        )
        return HTMLResponse(page, status_code=status)

    def _json(self, value: Any, status: int = 200) -> Response:
        return Response(jsonout.dumps(value), status_code=status, media_type="application/json")

    def _in_scope(self, version: Version) -> bool:
        """A version this page may show: one known to be the served revision's. A forgotten
        version (and a forget's tombstone) has no revision left, so it is never known to be:
        showing it would show another revision's record ids and hashes. The MCP tools' rule."""
        return version.revision is not None and version.revision == self.revision

    def _history(self, record_id: str) -> tuple[Version, ...]:
        return tuple(v for v in self.scoped.history(record_id=record_id) if self._in_scope(v))

    def _not_found(self, wants_json: bool, value: Any) -> Response:
        if wants_json:
            return self._json(value, 404)
        return self._html("not_found.html", 404, message=NOT_FOUND)

    # -- pages -------------------------------------------------------------------------------

    def search(self, request: Request) -> Response:
        params = self._params(request, ("q", "limit"))
        wants_json = self._wants_json(params)
        query = params.get("q", "")
        limit = params.get("limit", "5")
        # The rule and the words of the CLI's --limit: a whole number as text, then 1 to 10;
        # checked with the query box empty too, so that a bad limit is never silently dropped.
        count = validation.limit(validation.whole_number("limit", limit))
        if not query.strip():
            if wants_json:
                raise ValidationError("q", "is required: the words to look for")
            return self._html("search.html", query=query, result=None, asked={})
        now = self.clock.now()
        result = self.scoped.retrieve(revision=self.revision, query=query, now=now, limit=count)
        if wants_json:  # what `pyevidence retrieve` prints, the note for no hits included
            return self._json(
                tool.retrieve_output(
                    query=query, tenant=self.scoped.tenant, revision=self.revision, now=now, result=result
                )
            )
        hits = [
            {
                "hit": hit,
                "pieces": text.marked(hit.body, query),
                "version_url": _url("/version", record_id=hit.record_id, version=hit.version),
                "record_url": _url("/record", record_id=hit.record_id),
            }
            for hit in result
        ]
        # The links and the form keep a limit that was asked for: "this result as JSON" is this result.
        asked = {"limit": limit} if "limit" in params else {}
        return self._html(
            "search.html",
            now=now,  # the now the search judged expiry at, not a second reading of the clock
            query=query,
            result=result,
            hits=hits,
            no_evidence=tool.NO_EVIDENCE,
            # a query with no word can match nothing, and "none sharing a word" would be false
            has_words=bool(token_set(query)),
            word_rule=tool.WORD_RULE,
            no_word=tool.NO_WORD,
            asked=asked,
            json_url=_url("/", q=query, **asked, format="json"),
        )

    def version(self, request: Request) -> Response:
        params = self._params(request, ("record_id", "version"))
        wants_json = self._wants_json(params)
        record_id = self._required(params, "record_id", "the record the citation names")
        version = self._version_param(params, "version")
        found = self.scoped.get_version(record_id=record_id, version=version)
        if found.version is None or not self._in_scope(found.version):
            return self._not_found(wants_json, {"status": "unknown", "version": None})
        now = self.clock.now()
        if wants_json:  # the shape of `pyevidence get-version`, and whether it had expired at now
            return self._json({**found.to_dict(), "version": _with_expired(found.version, now)})
        return self._html(
            "version.html",
            now=now,
            found=found,
            version=found.version,
            expired=_expired(found.version, now),
            record_url=_url("/record", record_id=record_id),
        )

    def record(self, request: Request) -> Response:
        params = self._params(request, ("record_id",))
        wants_json = self._wants_json(params)
        record_id = self._required(params, "record_id", "the record to show")
        everything = self.scoped.history(record_id=record_id)
        shown = tuple(v for v in everything if self._in_scope(v))
        now = self.clock.now()
        # The shape of `pyevidence history`, with only this scope's versions, each saying
        # whether it had expired at now.
        versions = [_with_expired(v, now) for v in shown]
        as_json = {"tenant": self.scoped.tenant, "record_id": record_id, "versions": versions}
        if not shown:
            return self._not_found(wants_json, {**as_json, "versions": []})
        if wants_json:
            return self._json(as_json)
        # The record's current version, only where retrieve here would find it: of this scope (a
        # later put at another revision supersedes every version shown here, a forget all of
        # them) and not expired.
        last = everything[-1]
        live = self._in_scope(last)
        current = last if live and not _expired(last, now) else None
        return self._html(
            "record.html",
            now=now,
            record_id=record_id,
            current=current,
            lapsed=last if live and current is None else None,
            versions=[
                {
                    "v": v,
                    "url": _url("/version", record_id=record_id, version=v.version),
                    "expired": _expired(v, now),
                }
                for v in shown
            ],
            default_from=shown[-2].version if len(shown) > 1 else "",
            default_to=shown[-1].version,
        )

    def diff(self, request: Request) -> Response:
        params = self._params(request, ("record_id", "from", "to"))
        wants_json = self._wants_json(params)
        record_id = self._required(params, "record_id", "the record whose versions to compare")
        wanted = self._version_param(params, "from"), self._version_param(params, "to")
        by_version = {v.version: v for v in self._history(record_id)}
        old, new = by_version.get(wanted[0]), by_version.get(wanted[1])
        if old is None or new is None:
            nothing = {"record_id": record_id, "from": None, "to": None, "diff": None}
            return self._not_found(wants_json, nothing)
        lines, too_large = _diff(old, new)
        now = self.clock.now()
        if wants_json:
            ends = {"from": _with_expired(old, now), "to": _with_expired(new, now)}
            note = {"note": too_large} if too_large else {}
            return self._json({"record_id": record_id, **ends, "diff": lines, **note})
        return self._html(
            "diff.html",
            now=now,
            record_id=record_id,
            old=old,
            new=new,
            old_expired=_expired(old, now),
            new_expired=_expired(new, now),
            lines=lines,
            too_large=too_large,
            record_url=_url("/record", record_id=record_id),
        )

    def verify(self, request: Request) -> Response:
        params = self._params(request, ())
        wants_json = self._wants_json(params)
        checked = self.scoped.verify()
        if wants_json:  # the shape of `pyevidence verify`
            return self._json(checked.to_dict())
        return self._html("verify.html", checked=checked, proves=PROVES, does_not_prove=DOES_NOT_PROVE)

    def stylesheet(self, request: Request) -> Response:
        del request
        return Response(self.css, media_type="text/css")


def _expired(version: Version, now: int) -> bool:
    """Whether ``version`` had stopped being evidence at ``now`` (the rule retrieve applies, and
    the MCP tools' ``expired``)."""
    return version.expires_at is not None and version.expires_at <= now


def _with_expired(version: Version, now: int) -> dict[str, Any]:
    return {**version.to_dict(), "expired": _expired(version, now)}


def _diffable(version: Version) -> list[str]:
    """A version as lines to compare: its fields, then its body."""
    head = [f"kind: {version.kind}", f"source: {version.source}", f"expires_at: {version.expires_at}", ""]
    return head + str(version.body).split("\n")


def _diff(old: Version, new: Version) -> tuple[list[str] | None, str | None]:
    """The unified diff of two versions, or None and what to do instead when either is larger than
    the page compares (DIFF_MAX_LINES, DIFF_MAX_BYTES): the one place that bounds /diff's work."""
    compared = _diffable(old), _diffable(new)
    for version, lines in zip((old, new), compared, strict=True):
        size = sum(len(line.encode("utf-8", "surrogatepass")) + 1 for line in lines)
        if len(lines) > DIFF_MAX_LINES or size > DIFF_MAX_BYTES:
            return None, (
                f"Version {version.version} is too large to compare here ({len(lines):,} lines, "
                f"{size:,} bytes; this page compares at most {DIFF_MAX_LINES:,} lines and "
                f"{DIFF_MAX_BYTES:,} bytes of each version). Compare them on the command line: "
                "pyevidence get-version --db FILE --tenant T --record-id ID --version V for each, "
                "then a diff tool of your own."
            )
    diff = difflib.unified_diff(*compared, fromfile=old.version, tofile=new.version, lineterm="")
    return [line.rstrip("\n") for line in diff], None


class _App(Starlette):
    """Starlette with SecurityHeaders outside everything, its ServerErrorMiddleware included, so
    that the 500 for an unexpected error carries the headers as well as every other response."""

    def build_middleware_stack(self) -> ASGIApp:
        return SecurityHeaders(super().build_middleware_stack())


def create_app(
    scoped: ScopedStore,
    *,
    revision: str,
    clock: Clock,
    allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES,
) -> Starlette:
    """The app for one scope. ``allowed_hosts`` are the Host headers it answers (the name it is
    reached by): another name, as a DNS-rebinding page would send, gets 400."""
    pages = Pages(scoped, revision=validation.text("revision", revision), clock=clock)

    def handled(page: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def run(request: Request) -> Response:
            try:
                return page(request)
            except ValidationError as exc:
                if request.query_params.get("format") == "json":
                    return pages._json({"error": str(exc), "field": exc.field}, 400)
                return pages._html("error.html", 400, message=str(exc), title="Bad request")
            except EvidenceError as exc:  # the store's problem (a history changed outside pyevidence)
                if request.query_params.get("format") == "json":
                    return pages._json({"error": str(exc), "field": None}, 500)
                return pages._html("error.html", 500, message=str(exc), title="The store could not answer")

        return run

    async def not_found(request: Request, exc: Exception) -> Response:
        del request
        if isinstance(exc, HTTPException) and exc.status_code != 404:
            return Response(exc.detail, status_code=exc.status_code)
        return pages._html("not_found.html", 404, message=NOT_FOUND)

    routes = [
        Route("/", handled(pages.search), methods=["GET"]),
        Route("/version", handled(pages.version), methods=["GET"]),
        Route("/record", handled(pages.record), methods=["GET"]),
        Route("/diff", handled(pages.diff), methods=["GET"]),
        Route("/verify", handled(pages.verify), methods=["GET"]),
        Route("/static/style.css", pages.stylesheet, methods=["GET"]),
    ]
    app = _App(
        routes=routes,
        middleware=[
            Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts), www_redirect=False),
            Middleware(SameOriginOnly),
        ],
        exception_handlers={404: not_found},
    )
    # /verify/ is not /verify: no redirect, whose Location would be built from the Host header.
    app.router.redirect_slashes = False
    return app
