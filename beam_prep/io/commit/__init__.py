"""Output folders: staging, the lock, replacing only a job's own output, and the last step's
journalled commit.
"""
