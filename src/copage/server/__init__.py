"""copage.server"""
