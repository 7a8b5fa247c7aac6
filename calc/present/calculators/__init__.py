"""The calculator page's calculators, one module each (fields, defaults, run, the result's HTML),
over the shared form layer in form.py. calc/present/html.py is their registry."""
