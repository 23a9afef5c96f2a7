/*
 * graph.cu - decode steps as CUDA graphs, one per batch size.
 *
 * The first decode step of a batch size runs its ops directly, sizing every
 * scratch buffer for any step of that size (graph_mode: bounds from the
 * context limit, not from this step's positions); the second is captured
 * and every later one replays the graph. Everything a step varies (tokens,
 * positions, segments, page table) is read by the kernels from device
 * buffers at fixed addresses that step_begin refills before the launch, so a
 * replay needs nothing from the host but the launch itself. When a device
 * buffer moves (a bigger prefill grew a scratch), gen moves and the graphs
 * captured before are captured again.
 */
#include "backend/cuda/common.cuh"

int cuda_graph_begin(dsv4_backend *be, int key)
{
    cuda_impl *im = impl_of(be);
    im->graph_state = 0;
    if (key < 1 || key > MAX_GRAPH_KEY || im->q != 0) return 0; /* (ops on the side queue: a caller's bug) */
    if (!im->graphs) im->graphs = (cuda_graph *)calloc(MAX_GRAPH_KEY + 1, sizeof(cuda_graph));
    if (!im->graphs) return 0;
    im->graph_mode = true;
    cuda_graph *g = &im->graphs[key];
    if (g->exec && g->gen == im->gen) return im->graph_state = 2;
    if (g->exec) {
        CK(cudaGraphExecDestroy(g->exec));
        g->exec = NULL;
    }
    if (!g->seen) {
        g->seen = true;
        return 0; /* this step sizes the scratch */
    }
    CK(cudaStreamBeginCapture(im->stream, cudaStreamCaptureModeThreadLocal));
    im->capturing = true;
    return im->graph_state = 1;
}

void cuda_graph_end(dsv4_backend *be, int key)
{
    cuda_impl *im = impl_of(be);
    if (im->graph_state && key >= 1 && key <= MAX_GRAPH_KEY) {
        cuda_graph *g = &im->graphs[key];
        if (im->capturing) {
            cudaGraph_t graph;
            CK(cudaStreamEndCapture(im->stream, &graph));
            im->capturing = false;
            CK(cudaGraphInstantiate(&g->exec, graph, 0));
            CK(cudaGraphDestroy(graph));
            g->gen = im->gen;
        }
        CK(cudaGraphLaunch(g->exec, im->stream));
    }
    im->graph_state = 0;
    im->graph_mode = false;
}

void cuda_graphs_destroy(cuda_impl *im)
{
    if (!im->graphs) return;
    for (int k = 0; k <= MAX_GRAPH_KEY; k++)
        if (im->graphs[k].exec) cudaGraphExecDestroy(im->graphs[k].exec);
    free(im->graphs);
    im->graphs = NULL;
}
