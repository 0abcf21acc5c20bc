"""``create_dash_app(api_url)``: the dashboard. Assets are served locally (no CDN), compressed."""

from __future__ import annotations

import functools
from pathlib import Path

import dash

from attnscope.frontend.api_client import ApiClient
from attnscope.frontend.plot_config import register_export
from attnscope.frontend.security import DashSecurity, install_security
from attnscope.frontend.shell import shell

HERE = Path(__file__).parent

# Dash's page, with a language (screen readers, axe's html-has-lang); no inline script of ours
INDEX = """<!DOCTYPE html>
<html lang="en">
    <head>
        {%metas%}
        <title>{%title%}</title>
        {%favicon%}
        {%css%}
    </head>
    <body>
        {%app_entry%}
        <footer>
            {%config%}
            {%scripts%}
            {%renderer%}
        </footer>
    </body>
</html>"""


def dashboard_csp(script_hashes: list[str]) -> str:
    """The dashboard's Content-Security-Policy: scripts from this server plus Dash's own inline scripts
    by hash (its renderer start-up, clientside callbacks); styles inline too (Plotly writes <style>)."""
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self' " + " ".join(script_hashes),
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data: blob:",
            "font-src 'self' data:",
            "connect-src 'self'",
            "worker-src 'self' blob:",
            "object-src 'none'",
            "base-uri 'self'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )


def _security_headers(app: dash.Dash) -> None:
    """nosniff, no framing, no referrer and the CSP above on every answer of the dashboard."""
    policy: list[str] = []  # computed at the first answer: every page and clientside callback is defined by then

    @app.server.after_request
    def _add(response):
        if not policy:
            policy.append(dashboard_csp(app.csp_hashes()))
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault("Content-Security-Policy", policy[0])
        return response


def create_dash_app(
    api_url: str | None = None, token: str | None = None, security: DashSecurity | None = None
) -> dash.Dash:
    """The dashboard on ``api_url`` (``token``: the API's bearer token), behind the checks of
    ``attnscope.frontend.security`` (``security``: else the defaults, asking for ``token`` at log-in)."""
    app = dash.Dash(
        __name__,
        title="attnscope",
        assets_folder=str(HERE / "assets"),
        use_pages=True,
        pages_folder=str(HERE / "pages"),
        serve_locally=True,  # every script and stylesheet from this server: works offline
        compress=True,  # flask-compress: the JavaScript bundles travel gzip/brotli-compressed
        update_title=None,
        index_string=INDEX,
        meta_tags=[{"name": "viewport", "content": "width=device-width, initial-scale=1"}],
    )
    api = app.server.config["ATTNSCOPE_CLIENT"] = ApiClient(api_url, token=token)
    app.layout = functools.partial(shell, api_docs=f"{api.base_url}/docs")
    register_export(app)
    _security_headers(app)
    install_security(app, security or DashSecurity(credential=token or None))
    return app
