"""Downloader middlewares of the walk, one module each: the address guard's reasons, same origin,
robots.txt, each request's share of the budget, 429/503 pauses, redirects, conditional requests."""

from __future__ import annotations

from sitewalk.downloadermiddlewares.budget import BudgetMiddleware
from sitewalk.downloadermiddlewares.guard import AddressGuardMiddleware
from sitewalk.downloadermiddlewares.origin import SameOriginMiddleware
from sitewalk.downloadermiddlewares.redirect import WalkRedirectMiddleware
from sitewalk.downloadermiddlewares.retryafter import RetryAfterMiddleware
from sitewalk.downloadermiddlewares.robots import RobotsTxtMiddleware
from sitewalk.downloadermiddlewares.validators import ValidatorsMiddleware

__all__ = [
    "AddressGuardMiddleware", "BudgetMiddleware", "RetryAfterMiddleware", "RobotsTxtMiddleware",
    "SameOriginMiddleware", "ValidatorsMiddleware", "WalkRedirectMiddleware",
]
