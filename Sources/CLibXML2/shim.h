#ifndef CLIBXML2_SHIM_H
#define CLIBXML2_SHIM_H
#include <libxml/parser.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>

/// XML_SAX2_MAGIC as a typed constant: the macro's literal does not import into Swift as an
/// unsigned int.
static const unsigned int clibxml2_sax2_magic = XML_SAX2_MAGIC;
#endif
