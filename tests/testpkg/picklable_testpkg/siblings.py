"""A class that receives a method made in another module (like old pandas)."""

from .factories import make_summary


class Table:
    def __init__(self, rows):
        self.rows = rows


Table.summary = make_summary("table")
