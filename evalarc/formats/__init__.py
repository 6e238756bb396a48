"""Readers of other tools' result files into one model: run -> case -> check -> attempts."""

from __future__ import annotations

from evalarc.formats.load import load_results
from evalarc.formats.model import Attempt, Headline, Run, SampleMeta, Source

__all__ = ["Attempt", "Headline", "Run", "SampleMeta", "Source", "load_results"]
