"""copage.eval"""
