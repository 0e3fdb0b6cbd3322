"""A class whose ``__new__`` hands out one shared instance (``_new_instance``)."""

from __future__ import annotations


class Settings:
    _instance: Settings | None = None
    level: int

    def __new__(cls) -> Settings:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance.level = 1
        return cls._instance


SETTINGS = Settings()
