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
 *
 * A caller may cut a step's graph into pieces (graph_piece): expert
 * parallelism runs its all-reduce between two pieces, outside any graph
 * (NCCL inside graphs captured by one thread over several GPUs hangs, as
 * NCCL's documentation warns). A captured piece is launched as soon as it is
 * captured, so the capturing step runs; a replay launches the pieces in
 * order, each at the caller's graph_piece(0), the rest at graph_end.
 */
#include "backend/cuda/common.cuh"

static void drop_pieces(cuda_graph *g)
{
    for (int i = 0; i < g->n_piece; i++) cudaGraphExecDestroy(g->piece[i]); /* (teardown after an error too) */
    g->n_piece = 0;
}

/* End the capture under way, instantiate it as g's next piece and launch it. */
static void capture_close(cuda_impl *im, cuda_graph *g)
{
    cudaGraph_t graph;
    CK(cudaStreamEndCapture(im->stream, &graph));
    im->capturing = false;
    if (g->n_piece == g->cap_piece) {
        const int cap = g->cap_piece ? 2 * g->cap_piece : 4;
        cudaGraphExec_t *n = (cudaGraphExec_t *)realloc(g->piece, (size_t)cap * sizeof *n);
        if (!n) {
            fprintf(stderr, "dsv4: out of memory for a decode graph's pieces\n");
            abort();
        }
        g->piece = n;
        g->cap_piece = cap;
    }
    CK(cudaGraphInstantiate(&g->piece[g->n_piece], graph, 0));
    CK(cudaGraphDestroy(graph));
    CK(cudaGraphLaunch(g->piece[g->n_piece++], im->stream));
}

static void capture_open(dsv4_backend *be, cuda_impl *im)
{
    CK(cudaStreamBeginCapture(im->stream,
                              be->graph_shared ? cudaStreamCaptureModeRelaxed : cudaStreamCaptureModeThreadLocal));
    im->capturing = true;
}

static bool key_ok(const cuda_impl *im, int key)
{
    return key >= 1 && key <= MAX_GRAPH_KEY && im->q == 0; /* (ops on the side queue: a caller's bug) */
}

int cuda_graph_begin(dsv4_backend *be, int key)
{
    cuda_impl *im = impl_of(be);
    im->graph_state = 0;
    im->graph_key = key;
    im->graph_next = 0;
    if (!key_ok(im, key)) return 0;
    if (!im->graphs) im->graphs = (cuda_graph *)calloc(MAX_GRAPH_KEY + 1, sizeof(cuda_graph));
    if (!im->graphs) return 0;
    im->graph_mode = true;
    cuda_graph *g = &im->graphs[key];
    if (g->n_piece && g->gen == im->gen) return im->graph_state = 2;
    drop_pieces(g);
    if (!g->seen) {
        g->seen = true;
        return 0; /* this step sizes the scratch */
    }
    capture_open(be, im);
    return im->graph_state = 1;
}

/* What graph_begin(key) would answer now, changing nothing. */
int cuda_graph_peek(dsv4_backend *be, int key)
{
    cuda_impl *im = impl_of(be);
    if (!key_ok(im, key) || !im->graphs) return 0;
    const cuda_graph *g = &im->graphs[key];
    if (g->n_piece && g->gen == im->gen) return 2;
    return g->seen ? 1 : 0;
}

/* Forget key's graph (the next graph_begin captures it again; its scratch stays sized). */
void cuda_graph_drop(dsv4_backend *be, int key)
{
    cuda_impl *im = impl_of(be);
    if (key_ok(im, key) && im->graphs) drop_pieces(&im->graphs[key]);
}

/* Between graph_begin and graph_end: begin = 0 closes the piece under way (captured: instantiated and launched;
 * replayed: the next piece launched), begin = 1 opens the next (captured: a capture begun). What the caller issues
 * in between runs outside the graph, at every step. Nothing in a step that sizes the scratch. */
void cuda_graph_piece(dsv4_backend *be, int begin)
{
    cuda_impl *im = impl_of(be);
    if (!im->graph_state) return;
    cuda_graph *g = &im->graphs[im->graph_key];
    if (im->graph_state == 1) {
        if (!begin && im->capturing) {
            /* a capture ends joined: what runs on the second queue (an hc_pre's post-and-comb blocks, hc.cu, or
             * work the caller forked) joins queue 0 here, so that no later join waits on an event of this
             * capture; a cut while ops go to the second queue is the caller's bug */
            if (im->q != 0) {
                fprintf(stderr, "dsv4: a decode graph cut while ops go to the second queue\n");
                abort();
            }
            cuda_hc_join(im);
            if (im->side_open) {
                CK(cudaEventRecord(im->join_ev, im->queue[1]));
                CK(cudaStreamWaitEvent(im->queue[0], im->join_ev, 0));
                im->side_open = false;
            }
            capture_close(im, g);
        } else if (begin && !im->capturing)
            capture_open(be, im);
    } else if (!begin) {
        if (im->graph_next >= g->n_piece) {
            fprintf(stderr, "dsv4: a decode graph replayed with more pieces than were captured (%d)\n", g->n_piece);
            abort();
        }
        CK(cudaGraphLaunch(g->piece[im->graph_next++], im->stream));
    }
}

void cuda_graph_end(dsv4_backend *be, int key)
{
    cuda_impl *im = impl_of(be);
    if (im->capturing && (key != im->graph_key || !key_ok(im, key))) { /* a capture left open: the caller's bug */
        fprintf(stderr, "dsv4: a decode graph ended with another key (%d, captured %d) or on the second queue\n", key,
                im->graph_key);
        abort();
    }
    if (im->graph_state && key == im->graph_key && key_ok(im, key)) {
        cuda_graph *g = &im->graphs[key];
        if (im->graph_state == 1) {
            if (im->capturing) capture_close(im, g);
            g->gen = im->gen;
        } else
            while (im->graph_next < g->n_piece) CK(cudaGraphLaunch(g->piece[im->graph_next++], im->stream));
    }
    im->graph_state = 0;
    im->graph_mode = false;
}

void cuda_graphs_destroy(cuda_impl *im)
{
    if (!im->graphs) return;
    for (int k = 0; k <= MAX_GRAPH_KEY; k++) {
        drop_pieces(&im->graphs[k]);
        free(im->graphs[k].piece);
    }
    free(im->graphs);
    im->graphs = NULL;
}
