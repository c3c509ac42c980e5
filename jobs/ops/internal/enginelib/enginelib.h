// fm_engine_load loads the engines' libraries and resolves every function filemill
// calls, once per process: NULL, or the reason it failed.
const char *fm_engine_load(void);
