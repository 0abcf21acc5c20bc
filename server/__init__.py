"""REST API (FastAPI + pydantic) over the models and analyses."""
