"""nnisa.targets.dais"""
