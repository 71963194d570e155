"""nnisa.report"""
