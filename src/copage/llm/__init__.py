"""copage.llm"""
