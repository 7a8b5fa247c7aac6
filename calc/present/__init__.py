"""The presentation: charts, the calculators and their page, page addresses and the command line."""
