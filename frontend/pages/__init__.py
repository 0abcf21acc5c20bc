"""Dashboard pages (``dash.register_page``), one module per page."""
