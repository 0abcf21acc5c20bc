"""``create_dash_app(api_url)``: the dashboard. Assets are served locally (no CDN)."""

from __future__ import annotations

from pathlib import Path

import dash

from attnscope.frontend.api_client import ApiClient
from attnscope.frontend.layout import shell

HERE = Path(__file__).parent


def create_dash_app(api_url: str | None = None, token: str | None = None) -> dash.Dash:
    app = dash.Dash(
        __name__,
        title="attnscope",
        assets_folder=str(HERE / "assets"),
        use_pages=True,
        pages_folder=str(HERE / "pages"),
        serve_locally=True,  # every script and stylesheet from this server: works offline
        update_title=None,
    )
    app.server.config["ATTNSCOPE_CLIENT"] = ApiClient(api_url, token=token)
    app.layout = shell
    return app
