"""Inputs: any container the user hands rankwise, checked and normalised into the canonical tables."""
