"""The HTTP layer: routes (thin handlers), middlewares, request bodies in and errors out, and
the aiohttp site. It maps the services' domain errors to status codes (middlewares.py)."""
