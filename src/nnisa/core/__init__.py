"""nnisa.core"""
