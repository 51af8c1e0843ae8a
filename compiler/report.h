/*
 * report.h - what `autotmc check` and `autotmc graph` print.
 */
#ifndef AUTOTM_REPORT_H
#define AUTOTM_REPORT_H

#include <stdio.h>

#include "graph.h"
#include "schedule.h"

/* Sum of elements of all weight tensors. */
int64_t graph_parameters(const Graph *g);
/* Forward FLOPs: every node up to and including the loss. */
int64_t graph_forward_flops(const Graph *g);

/* The summary of `autotmc check`; with a schedule, the training step's too. */
void report_summary(FILE *f, const Graph *g, const Schedule *s, const char *path);
/* The graph as text, one tensor and one node per line; with a schedule, in
   its order and with every tensor's live interval. */
void report_graph(FILE *f, const Graph *g, const Schedule *s);
/* The graph as JSON (docs/training.md), for tools and the PyTorch oracle. */
void report_json(FILE *f, const Graph *g, const Schedule *s);
/* The graph in Graphviz dot. */
void report_dot(FILE *f, const Graph *g);

#endif
