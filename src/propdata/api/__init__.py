"""HTTP pieces every domain's endpoints share, below the domains and above kit and errors.

Wire base classes, shared query parameters and their checks, the page-size rule, the
OpenAPI declarations of errors and rate headers, and the guard against unknown parameters.
"""
