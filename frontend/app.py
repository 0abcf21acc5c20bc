"""``create_dash_app(api_url)``: the dashboard. Assets are served locally (no CDN), compressed."""

from __future__ import annotations

from pathlib import Path

import dash

from attnscope.frontend.api_client import ApiClient
from attnscope.frontend.plot_config import register_export
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


def create_dash_app(api_url: str | None = None, token: str | None = None) -> dash.Dash:
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
    app.server.config["ATTNSCOPE_CLIENT"] = ApiClient(api_url, token=token)
    app.layout = shell
    register_export(app)
    return app
