"""copage.cli"""
