package catalog

// A Source is where a client's catalog comes from (grantwire.WithCatalog): a loaded
// *Catalog (it is its own source), catalog JSON (Bytes) or a user's file (File).
type Source interface {
	// Catalog loads the catalog.
	Catalog() (*Catalog, error)
}

// Catalog returns c: a loaded catalog is its own source.
func (c *Catalog) Catalog() (*Catalog, error) { return c, nil }

// Bytes is catalog JSON ({"connectors": {...}}) as a source: Load, without the built-in
// agents.
type Bytes []byte

// Catalog loads b (Load).
func (b Bytes) Catalog() (*Catalog, error) { return Load(b) }

// File is a user's catalog file as a source: LoadFile, validated strictly, with the
// built-in agents.
type File string

// Catalog loads the file (LoadFile).
func (f File) Catalog() (*Catalog, error) { return LoadFile(string(f)) }
