"""Typed configuration (``service.config.settings``), imported from here by the rest of DocQA."""

from service.config.settings import *  # noqa: F403
