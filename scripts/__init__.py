"""Developer scripts that write into the repository; not part of the wheel."""
