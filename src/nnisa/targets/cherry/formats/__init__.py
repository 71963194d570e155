"""Cherry file formats: binary images (canonical and cherrycore encodings), assembly text, files."""
