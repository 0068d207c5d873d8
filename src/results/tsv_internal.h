/* aim_tsv's internals, shared by the writer (tsv.c) and the reader
 * (tsv_read.c) (not installed): the tags of the '#' lines that one writes
 * and the other reads back. */
#ifndef AIM_TSV_INTERNAL_H
#define AIM_TSV_INTERNAL_H

/* The digest line of a sealed file (aim_tsv_seal) */
static const char digest_tag[] = "# digest: ";

/* The metadata lines that aim_table_version and aim_table_config read back */
static const char version_tag[] = "# aimdyn ", config_tag[] = "# config ";

#endif
