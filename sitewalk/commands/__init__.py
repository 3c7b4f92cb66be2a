"""sitewalk's Scrapy commands (COMMANDS_MODULE)."""
