"""The group-per-case golden layout of schemas 1 and 2, read-only: aclcheck writes only
the packed layout (schema 3), and reads these older files through the same interface.

    group_reader  GroupFile: a case's group, its record attributes and datasets
    group_check   `inspect --check` of a group-per-case file
"""
