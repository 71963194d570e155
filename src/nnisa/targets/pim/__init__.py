"""nnisa.targets.pim"""
