"""copage: cooperative memory paging with keyword bookmarks."""
