"""click decorators: the function's name now holds a Command object."""

from __future__ import annotations

import click


@click.group()
def cli():
    """A command group."""


@cli.command()
@click.option("--count", default=1, help="How many greetings.")
@click.argument("name")
def greet(count, name):
    """Greet NAME."""
    for _ in range(count):
        click.echo(f"hello {name}")


@click.command()
@click.option("-v", "--verbose", is_flag=True)
def standalone(verbose):
    """A command outside any group."""
    return verbose
