"""Answer quality measured: question sets with known answer pages, and the evaluation that scores a store on one."""
