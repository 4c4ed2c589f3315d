"""splitdesk: one combined LLM request vs N parallel requests, live and measured."""

__version__ = "0.1.0"
