"""Dash dashboard; talks to the API over HTTP only (see frontend/api_client.py)."""
