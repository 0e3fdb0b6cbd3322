"""The one method every report format implements."""

from __future__ import annotations

import abc

from .._audit.model import Report


class Formatter(abc.ABC):
    """Turns a :class:`~picklable._audit.model.Report` into text."""

    @abc.abstractmethod
    def format(self, report: Report) -> str:
        """Render ``report``.

        Parameters
        ----------
        report:
            A finished audit.

        Returns
        -------
        str
            The whole document (a table, JSON text, an HTML page).
        """
