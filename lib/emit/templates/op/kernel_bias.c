  if (num_inputs > 1 && inputs[1].data != NULL) {
    const float* b = (const float*)inputs[1].data;
    int64_t len = {{sym}}_count(&inputs[1]), j;
    if (inputs[1].dtype != 1 || inputs[0].rank < 1 || len != inputs[0].dims[inputs[0].rank - 1])
      return PT_BAD_ARGUMENT;
    for (j = 0; j < n; ++j) y[j] = x[j] + b[j % len];
    x = y;
  }
