/*
 * import.h - `autotmc import`: an ONNX model exported from PyTorch as a
 * .net file and its weights (compiler/import/onnx_net.c; docs/import.md).
 */
#ifndef AUTOTM_IMPORT_H
#define AUTOTM_IMPORT_H

#include <stddef.h>
#include <stdint.h>

/* What an import made. */
typedef struct ImportStats {
	int nodes;        /* ONNX nodes read (Constant nodes not counted) */
	int blocks;       /* .net blocks (residual, add, concat, gate) */
	int tensors;      /* tensors written to the weights (weights and running statistics) */
	int64_t elements; /* their elements */
} ImportStats;

/*
 * Read onnx_path and write the .net file to net_path (NULL: stdout; its
 * messages name it net_name) and, when weights_path is given, the
 * initializers as safetensors under the .net file's names. 0, or -1 with
 * the reason in err (the node, its op type and inputs where one is at
 * fault); nothing is written then.
 */
int onnx_import(const char *onnx_path, const char *net_path, const char *net_name, const char *weights_path,
                ImportStats *st, char *err, size_t errlen);

#endif
