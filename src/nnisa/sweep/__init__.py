"""nnisa.sweep"""
