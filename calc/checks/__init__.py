"""The checks: how close the models come to what real starts logged."""
