"""nnisa.targets"""
